"""bench/precision_quality.py's vocabulary product alone: the width of the product the model's decoding
runs (it once took the copy switch's input, 2H + E, for See et al.'s H: 2.5x the product's FLOPs)."""

from bench.precision_quality import product_ratios
from helpers.e2e import random_pair_data, torch_threads
from onmt.bin import train as train_bin


def test_the_product_alone_has_the_decodings_width(tmp_path):
    data = random_pair_data(str(tmp_path), seed=0, n_examples=20, max_len=6, target=lambda words: words[:2])
    widths = {}
    with torch_threads(1):
        for family, args in (("copy", ["-copy_attn", "-brnn", "-global_attention", "mlp"]),
                             ("reinforced", ["-reinforced", "-brnn"])):
            train_bin.main(["-data", data, *args, "-rnn_size", "24", "-word_vec_size", "8", "-batch_size", "4",
                            "-train_steps", "1", "-save_checkpoint_steps", "1", "-valid_steps", "1",
                            "-save_model", str(tmp_path / family), "-log_file", str(tmp_path / "log")])
            times, shape = product_ratios(str(tmp_path / f"{family}_step_1.pt"), ["fp32"], 6, "cpu", repeats=1)
            assert set(times) == {"fp32"} and times["fp32"] > 0
            widths[family] = shape[1]
    assert widths == {"copy": 24, "reinforced": 3 * 24}   # H; the reinforced model's [h; c_e; c_d]
