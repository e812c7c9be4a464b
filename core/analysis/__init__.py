"""Analyses of the trained model, beside the paper's library (core/): what they read, the model never needs.

- `inside`: one recorded forward pass (every intermediate state) and what the Inside tab computes from it;
- `attribution`: gradient x input and occlusion for one output token;
- `heads`: the head atlas, each head's measured role over the validation set (`python -m core.analysis.heads`);
- `searchtree`: the record of every candidate beam search looked at;
- `compare`: two models on one sentence: both translations scored under both, their attention side by side, every
  head ranked by how much its maps differ;
- `patching`: a sentence and an edited copy: the original's encoder state restored at each (layer, position) of
  the edited run, and how much of the translation's log-probability comes back (`python -m core.analysis.patching`).
"""
