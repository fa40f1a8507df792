"""Embeddings and GloVe-format loading."""
import pytest
import torch

from onmt.constants import PAD, SPECIALS
from onmt.errors import UserError
from onmt.inputters.vocab import Vocab
from onmt.modules.embeddings import Embeddings


def test_glove_loading_counts_found_words(tmp_path):
    vocab = Vocab(SPECIALS + ["the", "cat", "sat"])
    path = tmp_path / "vec.txt"
    path.write_text("the 1 2 3\ndog 4 5 6\ncat 7 8 9\nthe 0 0 0\n")
    emb = Embeddings(len(vocab), 3)
    sat_before = emb.weight[vocab.stoi["sat"]].clone()
    assert emb.load_pretrained(str(path), vocab) == 2
    assert torch.equal(emb.weight[vocab.stoi["the"]], torch.tensor([1.0, 2, 3]))  # first vector wins
    assert torch.equal(emb.weight[vocab.stoi["cat"]], torch.tensor([7.0, 8, 9]))
    assert torch.equal(emb.weight[vocab.stoi["sat"]], sat_before)
    assert (emb.weight[PAD] == 0).all()


def test_glove_prefix_rows_only(tmp_path):
    vocab = Vocab(SPECIALS + ["a", "b"])
    path = tmp_path / "vec.txt"
    path.write_text("2 2\na 1 1\nb 2 2\n")  # word2vec header skipped
    emb = Embeddings(5, 2)  # only the first 5 words (a decoder over a shared prefix)
    assert emb.load_pretrained(str(path), vocab) == 1


def test_glove_dimension_mismatch(tmp_path):
    vocab = Vocab(SPECIALS + ["a"])
    path = tmp_path / "vec.txt"
    path.write_text("a 1 2 3\nb 1 2\n")
    with pytest.raises(UserError, match=r"vec.txt, line 2"):
        Embeddings(len(vocab), 3).load_pretrained(str(path), vocab)


def test_a_binary_or_unreadable_vectors_file_or_no_word_found_is_one_line_naming_the_formats(tmp_path):
    """OpenNMT-py's tools/embeddings_to_torch.py writes a .pt tensor: read as text it found no word and training
    went on from random vectors; here one line says what the file is and what is expected."""
    import gzip
    vocab = Vocab(SPECIALS + ["a", "b"])
    emb = Embeddings(len(vocab), 2)
    torch.save(torch.zeros(len(vocab), 2), tmp_path / "emb.pt")
    (tmp_path / "w2v.bin").write_bytes(b"2 2\na \x00\x00\x80?\x00\x00\x00@\n")
    (tmp_path / "other.txt").write_text("x 1 2\ny 3 4\n")
    with gzip.open(tmp_path / "other.txt.gz", "wt") as f:
        f.write("A 1 2\n")
    (tmp_path / "bad.gz").write_bytes(b"not gzip at all")
    for name, what in (("emb.pt", "is a PyTorch file"), ("w2v.bin", "is a binary file"),
                       ("missing.txt", "cannot read the word vectors"), ("bad.gz", "cannot read the word vectors"),
                       ("other.txt", "no vector for any of the 6 vocabulary words"),
                       ("other.txt.gz", "lowercased data needs lowercased vectors")):
        with pytest.raises(UserError, match=what) as e:
            emb.load_pretrained(str(tmp_path / name), vocab)
        assert "GloVe text" in str(e.value) and "word2vec text" in str(e.value) and "\n" not in str(e.value), name


def test_padding_row_and_dropout():
    emb = Embeddings(6, 4, dropout=0.5).eval()
    out = emb(torch.tensor([[PAD, 4]]))
    assert out.shape == (1, 2, 4) and (out[0, 0] == 0).all()
