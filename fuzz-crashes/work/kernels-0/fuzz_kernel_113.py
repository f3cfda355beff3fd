import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (-(((0.25 - a) * (b * a)) * pto.select(1.5 > (a + a), 1.5, (a + a))))
        t1 = (((a - (-a)) - b) * ((-0.25) - pto.select(b <= pto.select(1.5 != b, 1.5, b), b, pto.select(1.5 != b, 1.5, b))))
        t2 = a
        if t1 < t1:
            t2 = b
        t3 = ((1.5 - pto.select(1.5 != (-1.5), 1.5, (-1.5))) + t1)
        pto.store(o + i, t3)
