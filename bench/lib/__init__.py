"""What the benchmarks of bench/ share (not runnable): common.py (synthetic batches, the measured matmul
peak, the float32 floor line), measured_run.py and compare_upstream_table.py (bench/compare_upstream.py's
process runner and table), translation_ab.py (A/B timing of two translation set-ups),
per_step.py (the reinforced model's per-step generator reference, which the tests compare against)."""
