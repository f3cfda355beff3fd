import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (-(((a & b) * (b * b)) | a))
        t1 = (t0 * (1 + a))
        t2 = ((-((t0 & t0) * (t0 + b))) + ((t0 + (3 | t1)) * (pto.select(a < 100, a, 100) & (a + -7))))
        t3 = ((((100 ^ b) * a) & ((-7 ^ 1) - (t0 - t0))) & 3)
        t4 = ((b - b) * ((pto.select(t0 <= t3, t0, t3) + t3) * (-(a - t2))))
        t5 = (t4 & ((t0 ^ (-1)) | (pto.select(t1 == t1, t1, t1) & (1 * t4))))
        pto.store(o + i, t5)
