import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (pto.select(((b * a) * pto.select(a == a, a, a)) <= ((b * b) + (-3.0 - -3.0)), ((b * a) * pto.select(a == a, a, a)), ((b * b) + (-3.0 - -3.0))) * (((--3.0) + a) - 1.5))
        pto.store(o + i, t0)
