"""See what a model attends to and copies.

- onmt/translate/records.py (not here: translate.py writes them): one plain record per example
  (source and predicted words, encoder attention, intra-decoder attention, p(copy), copied marks)
  from a search Hypothesis; the -attn_debug dump (a .npz anyone can read with numpy) and its reader;
- plots.py: one PNG per example (translate.py -attn_plot, tools/plot_attention.py), matplotlib
  imported only there;
- sample.py: the block train.py -sample_every logs (a validation example's greedy prediction with
  its copied words marked).

A word is *copied* when the produced id is an OOV copy (id >= V_tgt) or p(copy) >= 0.5 at its step
(`records.copied_marks`); models without a pointer copy nothing.
"""
