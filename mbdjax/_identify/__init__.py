"""Identification from data: parameter fits (`fit`, `fit_loss`, single and multiple shooting),
sensitivities and fit configurations of the `mbdjax fit` command; all built on `simulate`.

Nothing is imported here: each module is loaded where it is used (`import mbdjax` stays light).
"""
