import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = a
        t1 = (-(((-a) - (-3.0 + t0)) - (pto.select(a < b, a, b) - 2.0)))
        pto.store(o + i, t1)
