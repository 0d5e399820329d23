"""Evaluating Generative Models via One-Dimensional Code Distributions: CHD and CMMS.

- :mod:`.cmms`: the CMMS regressor (Sec. 4.2), its training data and training;
- :mod:`.scoring`: CHD (Sec. 4.1) and CMMS of a (model, dataset) in reference tokens;
- :mod:`.sensitivity`: CHD and CMMS under graded degradations (Fig. 2);
- :mod:`.tables`: the columns of the token-metrics table.
"""
