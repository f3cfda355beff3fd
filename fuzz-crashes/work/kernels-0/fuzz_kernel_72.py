import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (0.25 * a)
        t1 = a
        if t0 < b:
            t1 = t0
        t2 = t0
        if t1 < b:
            t2 = ((((t1 * -3.0) + a) + (--3.0)) * ((2.0 + (a * a)) + pto.select(0.25 == (t1 + b), 0.25, (t1 + b))))
        pto.store(o + i, t2)
