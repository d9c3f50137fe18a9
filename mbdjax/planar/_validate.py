"""Structural checks of a Mechanism before it is compiled (collect all, raise once)."""

from __future__ import annotations

import numpy as np

from .._builder import unique_name_problems
from ._joints import COORDINATE_AXES

_KIND_LABEL = {
    "revolute": "revolute", "translational": "translational", "distance": "distance",
    "fix": "fix", "drive_angle": "drive_angle", "drive_distance": "drive_distance",
    "spring_damper": "spring_damper", "rotational_spring_damper": "rotational_spring_damper",
    "force": "force", "torque": "torque",
}


def validate(mech) -> list[str]:
    """Every structural problem of `mech`, each naming the part and the fix."""
    problems = list(mech._problems)
    bodies = [b[0] for b in mech._bodies]
    known = set(b for b in bodies if isinstance(b, str)) | {"ground"}
    known_list = ["ground"] + [b for b in bodies if isinstance(b, str) and b != "ground"]

    if not mech._bodies:
        problems.append("Mechanism: there are no bodies; add at least one with body(name, mass, inertia).")

    # --------------------------------------------------------------- names
    parts = ([("body", b[0]) for b in mech._bodies]
             + [(_KIND_LABEL[j.kind], j.name) for j in mech._joints]
             + [(_KIND_LABEL[e.kind], e.name) for e in mech._elements])
    problems.extend(unique_name_problems(parts))

    # --------------------------------------------------------------- bodies
    for name, mass, inertia in mech._bodies:
        if float(mass) < 0:
            problems.append(f"body {name!r}: mass {float(mass)} kg is negative; use mass >= 0 (0 for a massless link).")
        if float(inertia) < 0:
            problems.append(
                f"body {name!r}: inertia {float(inertia)} kg·m² is negative; use the polar moment "
                "about the centroid, >= 0."
            )

    def check_body(label, role, body):
        if not isinstance(body, str) or body not in known:
            problems.append(f"{label}: unknown body {body!r} for `{role}`; known bodies are {known_list}.")
            return False
        return True

    # --------------------------------------------------------------- joints
    drive_pairs: dict = {}
    fixed: dict = {}
    for j in mech._joints:
        label = f"{_KIND_LABEL[j.kind]} {j.name!r}"
        if j.kind == "fix":
            ok = check_body(label, "body", j.body_i)
            if ok and j.body_i == "ground":
                problems.append(f"{label}: ground is already fixed; fix a moving body instead.")
            bad = [c for c in j.coordinates if c not in COORDINATE_AXES]
            if bad or not j.coordinates:
                problems.append(f"{label}: coordinates must be a non-empty subset of {list(COORDINATE_AXES)}, "
                                f"got {list(j.coordinates)}.")
            dup = sorted({c for c in j.coordinates if j.coordinates.count(c) > 1})
            if dup:
                problems.append(f"{label}: coordinates {dup} are listed twice; list each once.")
            for c in set(j.coordinates) & set(COORDINATE_AXES):
                key = (j.body_i, c)
                if key in fixed and fixed[key] != j.name:
                    problems.append(f"{label}: {j.body_i}.{c} is already fixed by fix {fixed[key]!r}; "
                                    "fix each coordinate once.")
                fixed.setdefault(key, j.name)
            continue
        ok_i = check_body(label, "body_i", j.body_i)
        ok_j = check_body(label, "body_j", j.body_j)
        if ok_i and ok_j and j.body_i == j.body_j:
            problems.append(f"{label}: body_i and body_j are both {j.body_i!r}; a joint connects two different bodies.")
        if j.kind == "distance" and float(j.params["length"]) <= 0:
            problems.append(
                f"{label}: length {float(j.params['length'])} m must be > 0; for two points that "
                "coincide use a revolute joint instead."
            )
        if j.kind == "translational" and float(np.linalg.norm(j.params["axis_i"])) == 0.0:
            problems.append(f"{label}: axis_i has zero length; give the sliding direction on body_i, e.g. (1, 0).")
        if j.kind in ("drive_angle", "drive_distance") and ok_i and ok_j:
            if j.kind == "drive_angle":
                key = ("angle", frozenset((j.body_i, j.body_j)))
                what = f"the relative angle of {j.body_i!r} and {j.body_j!r}"
            else:
                ends = frozenset(((j.body_i, tuple(j.params["point_i"])), (j.body_j, tuple(j.params["point_j"]))))
                key = ("distance", ends)
                what = f"the distance between the same two points of {j.body_i!r} and {j.body_j!r}"
            if key in drive_pairs:
                problems.append(
                    f"{label}: conflicting drivers: {drive_pairs[key]!r} already drives {what}; "
                    "remove one of them or combine the two motions into one f(t, p)."
                )
            else:
                drive_pairs[key] = j.name

    # --------------------------------------------------------------- elements
    for e in mech._elements:
        label = f"{_KIND_LABEL[e.kind]} {e.name!r}"
        if e.kind in ("force", "torque"):
            check_body(label, "body", e.body_i)
            continue
        ok_i = check_body(label, "body_i", e.body_i)
        ok_j = check_body(label, "body_j", e.body_j)
        if ok_i and ok_j and e.body_i == e.body_j:
            problems.append(f"{label}: body_i and body_j are both {e.body_i!r}; connect two different bodies.")
        if e.kind in ("spring_damper", "rotational_spring_damper"):
            for key, unit in (("k", "N/m" if e.kind == "spring_damper" else "N·m/rad"),
                              ("c", "N·s/m" if e.kind == "spring_damper" else "N·m·s/rad")):
                if float(e.params[key]) < 0:
                    problems.append(f"{label}: `{key}` = {float(e.params[key])} {unit} is negative; a spring or "
                                    "damper constant must be >= 0.")
        if e.kind == "spring_damper" and float(e.params["length0"]) < 0:
            problems.append(
                f"{label}: free length length0 {float(e.params['length0'])} m is negative; use a "
                "length >= 0 (the distance between the points when the spring is relaxed)."
            )
    return problems
