"""Activation rows: every registered activation, with the configurations whose
declarations differ (projections, layouts, sharing, ε = 0, lattices)."""

import jax

import taxdl.nn as tnn

from ._case import Case


def _sigma(r):
    return r / (1 + r)


CASES = [
    # elementwise
    Case("ReLU", tnn.ReLU, n=8),
    Case("LeakyReLU", lambda: tnn.LeakyReLU(0.1), n=8),
    Case("ELU", tnn.ELU, n=8),
    Case("GELU", tnn.GELU, n=8),
    Case("SiLU", tnn.SiLU, n=8),
    Case("Softplus", tnn.Softplus, n=8),
    Case("Sigmoid", tnn.Sigmoid, n=8),
    Case("HardTanh", tnn.HardTanh, n=8),
    Case("Sin", tnn.Sin, n=8),
    # isotropic
    Case("Isotropic", lambda: tnn.Isotropic(_sigma), n=8),
    Case("IsotropicReLU", lambda: tnn.IsotropicReLU(0.5), n=8),
    Case("IsotropicReLU", lambda: tnn.IsotropicReLU(0.5, r_max=2.0), n=8),
    Case("IsotropicThreshold", lambda: tnn.IsotropicThreshold(0.5), n=8),
    Case("IsotropicLeakyReLU", lambda: tnn.IsotropicLeakyReLU(0.1, 0.5), n=8),
    Case("IsotropicSoftReLU", lambda: tnn.IsotropicSoftReLU(1.0, 0.5), n=8),
    Case("IsotropicSoftLeakyReLU", lambda: tnn.IsotropicSoftLeakyReLU(0.1, 1.0, 0.5), n=8),
    Case("IsotropicSinusoid", lambda: tnn.IsotropicSinusoid(1.5), n=8),
    Case("Squash", tnn.Squash, n=8),
    # conic (Theorem 4.7). With the default ε = 1e-7 the positive cone scalings fail only
    # where ‖x₋₁‖ is comparable to ε, far below float32 resolution at the checker's input
    # scales, so that row's maximality is searched in the float64 leg (and confirmed in
    # float32 by the ε = 1e-2 row, same declaration: the isometric cone group).
    Case("CoLU", lambda: tnn.CoLU(cone_dim=4), n=8, float32_kwargs={"maximality": False}),
    Case("CoLU", lambda: tnn.CoLU(cone_dim=4, eps=1e-2), n=8),
    Case("CoLU", lambda: tnn.CoLU(cone_dim=4, projection="soft", eps=0.0), n=8),
    Case("CoLU", lambda: tnn.CoLU(cone_dim=3, projection="firm", layout="axes_first",
                                  eps=1e-2), n=9),
    Case("CoLU", lambda: tnn.CoLU(cone_dim=4, shared_axis=True, eps=0.0), n=7),
    Case("CoLU", lambda: tnn.CoLU(cone_dim=2), n=8),
    Case("RCoLU", lambda: tnn.RCoLU(cone_dim=4), n=8, float32_kwargs={"maximality": False}),
    Case("RCoLU", lambda: tnn.RCoLU(cone_dim=4, eps=1e-2), n=8),
    Case("RCoLU", lambda: tnn.RCoLU(cone_dim=4, projection="soft", eps=0.0), n=8),
    # quasi-isotropic
    Case("QuasiIsotropic", lambda: tnn.QuasiIsotropic(alpha=3.0, beta=0.5), n=4),
    Case("LatticeIsotropic", lambda: tnn.LatticeIsotropic("cubic"), n=4),
    Case("LatticeIsotropic", lambda: tnn.LatticeIsotropic("simplex"), n=3),
    Case("LatticeIsotropic", lambda: tnn.LatticeIsotropic("polygon", k=6)),
    Case("TrainableDirection", lambda: tnn.TrainableDirection(4, key=jax.random.key(0))),
    # complex and other representations
    Case("UnitaryIsotropic", tnn.UnitaryIsotropic, n=4),
    Case("PhaseElementwise", tnn.PhaseElementwise, n=4),
    Case("Bloch", tnn.Bloch),
    Case("LorentzIsotropic", tnn.LorentzIsotropic, n=4),
]
