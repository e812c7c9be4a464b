"""Analyses of the trained model, beside the paper's library (core/): what they read, the model never needs.

- `inside`: one recorded forward pass (every intermediate state) and what the Inside tab computes from it;
- `attribution`: gradient x input and occlusion for one output token;
- `heads`: the head atlas, each head's measured role over the validation set (`python -m core.analysis.heads`);
- `searchtree`: the record of every candidate beam search looked at.
"""
