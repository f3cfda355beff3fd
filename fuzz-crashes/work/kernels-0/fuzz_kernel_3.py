import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = b
        t1 = (t0 ^ pto.select(b < a, b, a))
        t2 = (-100)
        t3 = ((t0 & (t0 + a)) - pto.select(100 < ((b * t0) + (-t1)), 100, ((b * t0) + (-t1))))
        t4 = (-1)
        pto.store(o + i, t4)
