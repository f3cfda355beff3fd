import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = pto.select(-3.0 < (-(-pto.select(b < b, b, b))), -3.0, (-(-pto.select(b < b, b, b))))
        t1 = ((2.0 - (pto.select(b > t0, b, t0) + b)) - (-(t0 - pto.select(t0 == a, t0, a))))
        pto.store(o + i, t1)
