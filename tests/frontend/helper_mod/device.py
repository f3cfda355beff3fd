"""Helpers in another module (own globals) for tests/frontend/test_helpers.py."""

import pypto as pto

SCALE = 3.0


@pto.func
def scaled(v):
    return v * SCALE


def bad_mix(v, n):
    return v + n          # float + int: the error must name this line
