"""Special tokens: their words and their ids, the first entries of every vocabulary."""

UNK_WORD, PAD_WORD, BOS_WORD, EOS_WORD = "<unk>", "<blank>", "<s>", "</s>"
SPECIALS = [UNK_WORD, PAD_WORD, BOS_WORD, EOS_WORD]
UNK, PAD, BOS, EOS = 0, 1, 2, 3
N_SPECIALS = len(SPECIALS)
