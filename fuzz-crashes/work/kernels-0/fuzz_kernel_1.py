import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (((-(2.0 * -3.0)) - a) * ((-(-2.0)) - pto.select((b + 0.25) < pto.select(b > -3.0, b, -3.0), (b + 0.25), pto.select(b > -3.0, b, -3.0))))
        t1 = a
        if a >= t0:
            t1 = b
        t2 = t0
        pto.store(o + i, t2)
