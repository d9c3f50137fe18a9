"""Structural checks of a spatial Mechanism before it is compiled (collect all, raise once)."""

from __future__ import annotations

import numpy as np

from .._builder import unique_name_problems
from ._bodies import GROUND


def validate(mech) -> list[str]:
    """Every structural problem of `mech`, each naming the part and the fix."""
    problems = list(mech._problems)
    bodies = [b[0] for b in mech._bodies]
    known = set(b for b in bodies if isinstance(b, str)) | {GROUND}
    listing = ["ground"] + [b for b in bodies if isinstance(b, str) and b != GROUND]
    if not mech._bodies:
        problems.append("Mechanism: there are no bodies; add at least one with body(name, mass, inertia).")

    parts = ([("body", b[0]) for b in mech._bodies] + [(j.kind, j.name) for j in mech._joints]
             + [(c.kind, c.name) for c in mech._contacts] + [(e.kind, e.name) for e in mech._elements])
    problems.extend(unique_name_problems(parts))

    for name, mass, J, _ in mech._bodies:
        if float(mass) < 0:
            problems.append(f"body {name!r}: mass {float(mass)} kg is negative; use mass >= 0.")
        if not np.allclose(J, J.T, rtol=1e-12, atol=1e-15):
            problems.append(f"body {name!r}: the inertia tensor is not symmetric; give J = Jᵀ (kg·m², body axes).")
        elif np.linalg.eigvalsh(J).min() < -1e-12 * max(1.0, np.abs(J).max()):
            problems.append(
                f"body {name!r}: the inertia tensor has a negative principal moment "
                f"({np.linalg.eigvalsh(J).min():.3g} kg·m²); give a positive semi-definite tensor."
            )
        else:
            moments = np.linalg.eigvalsh(J)
            if moments[2] > moments[0] + moments[1] + 1e-9 * max(1.0, moments[2]):
                problems.append(
                    f"body {name!r}: principal moments {np.round(moments, 6).tolist()} kg·m² break the triangle "
                    "inequality (the largest exceeds the sum of the other two), which no rigid body has; check "
                    "the values and their axes."
                )

    def body_ref(label, body, role):
        if body not in known:
            problems.append(f"{label}: {role} {body!r} is not a body; the bodies are {listing}.")

    for j in mech._joints:
        label = f"{j.kind} {j.name!r}"
        body_ref(label, j.body_i, "body_i")
        body_ref(label, j.body_j, "body_j")
        if j.body_i == j.body_j:
            problems.append(f"{label}: body_i and body_j are both {j.body_i!r}; a joint connects two bodies.")
        for key in ("axis_i", "axis_j"):
            if key in j.params and not np.linalg.norm(j.params[key]) > 0:
                problems.append(f"{label}: `{key}` is the zero vector; give the joint axis direction.")
        if "rotation" in j.params:
            C = j.params["rotation"]
            if not (np.allclose(C.T @ C, np.eye(3), atol=1e-9) and np.linalg.det(C) > 0):
                problems.append(f"{label}: `rotation` must be a proper rotation matrix (CᵀC = I, det C = 1).")

    for c in mech._contacts:
        label = f"{c.kind} {c.name!r}"
        body_ref(label, c.body, "body")
        if c.body == GROUND:
            problems.append(f"{label}: ground cannot roll; name the moving body.")
        if not float(c.params["radius"]) > 0:
            problems.append(f"{label}: radius {float(c.params['radius'])} m must be positive.")
        if "axis" in c.params and not np.linalg.norm(c.params["axis"]) > 0:
            problems.append(f"{label}: `axis` is the zero vector; give the disk's symmetry axis in body axes.")

    for e in mech._elements:
        label = f"{e.kind} {e.name!r}"
        body_ref(label, e.body_i, "body" if e.body_j is None else "body_i")
        if e.body_j is not None:
            body_ref(label, e.body_j, "body_j")
        if e.kind == "spring_damper":
            for key in ("k", "c", "length0"):
                if float(e.params[key]) < 0:
                    problems.append(f"{label}: `{key}` = {float(e.params[key])} must be >= 0.")
    return problems
