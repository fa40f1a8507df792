"""The arms of experiments/rl_vs_ml_tuned.py, read by it and by its report."""

# arm kind -> (-rl_gamma or None, learning rate, fresh Adam, more train.py options, description); kinds in
# MATCHED train on the pairs resampled to the test set's source-reference overlap (matched_data): "subsample"
# keeps each pair at most once (o, p: 1,086 of the 33,083 pairs survive, the test set's low-overlap share
# being 2.5x training's), "oversample" draws as many pairs as training has, with replacement (q, v)
KINDS = {"a": (0.9984, "0.0001", True, [], "mixed objective, gamma 0.9984, lr 1e-4 (the paper's)"),
         "b": (None, "0.0001", True, [], "ML continued at lr 1e-4, equal CPU time"),
         "m": (None, "0.001", False, [], "ML phase continued at its own lr 1e-3 and Adam state, equal CPU time"),
         # the variants of the mixed objective (-variants): what might make it help on the test set
         "r": (0.9984, "0.0001", True, ["-rl_reward", "rougeL_recall"], "mixed, reward ROUGE-L recall"),
         "x": (0.9984, "0.0001", True, ["-rl_reward", "mix"], "mixed, reward mean of ROUGE-1/2/L F1"),
         "l": (0.9984, "0.0001", True, ["-rl_reward", "rougeL_bp"],
               "mixed, reward ROUGE-L F1 x brevity penalty (length-aware)"),
         "g": (0.9, "0.0001", True, [], "mixed, gamma 0.9"),
         "h": (0.9984, "0.0003", True, [], "mixed, lr 3e-4"),
         "o": (0.9984, "0.0001", True, [], "mixed, training pairs resampled to the test set's overlap"),
         "p": (None, "0.0001", True, [], "ML at lr 1e-4, training pairs resampled to the test set's overlap"),
         "q": (0.9984, "0.0001", True, [], "mixed, training pairs drawn with replacement to the test set's overlap"),
         "v": (None, "0.0001", True, [], "ML at lr 1e-4, training pairs drawn with replacement to the test set's "
                                         "overlap")}
MAIN = "abm"
MATCHED = {"o": "subsample", "p": "subsample", "q": "oversample", "v": "oversample"}
