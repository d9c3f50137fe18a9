"""Numerical kernels: dense and block-tridiagonal linear algebra, sparse Jacobians, the
constraint Gram matrix, unrolled Runge–Kutta steps, the projected diffrax solve and XLA's CPU
settings. They know nothing of models' front ends; the formulations and `simulate` use them.

Nothing is imported here: each module is loaded where it is used (`import mbdjax` stays light).
"""
