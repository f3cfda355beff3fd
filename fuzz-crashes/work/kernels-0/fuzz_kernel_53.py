import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (a - (-(b * b)))
        t1 = (pto.select(((2.0 - a) - (-3.0 + t0)) <= pto.select(t0 <= (-1.5), t0, (-1.5)), ((2.0 - a) - (-3.0 + t0)), pto.select(t0 <= (-1.5), t0, (-1.5))) + (((-b) - pto.select(t0 == -3.0, t0, -3.0)) * 1.5))
        pto.store(o + i, t1)
