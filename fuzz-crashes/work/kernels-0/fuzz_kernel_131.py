import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (b * ((-a) + a))
        t1 = t0
        t2 = b
        if t1 >= t1:
            t2 = t0
        t3 = ((((t2 + t1) - (b * 2.0)) + (pto.select(t2 >= a, t2, a) - b)) * (-pto.select((--3.0) < t0, (--3.0), t0)))
        pto.store(o + i, t3)
