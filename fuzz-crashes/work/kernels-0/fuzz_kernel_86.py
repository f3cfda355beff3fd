import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (-pto.select((-(a | a)) != (b & pto.select(a <= -7, a, -7)), (-(a | a)), (b & pto.select(a <= -7, a, -7))))
        t1 = t0
        if t0 < t0:
            t1 = (1 | (((a & b) | (a ^ t0)) - (a + pto.select(a >= t0, a, t0))))
        t2 = b
        if a >= t1:
            t2 = ((pto.select(b <= t0, b, t0) | pto.select((t1 | a) < t1, (t1 | a), t1)) + 100)
        t3 = t0
        if t1 < t1:
            t3 = (-(((a ^ 1) + (1 * t1)) | pto.select((b & 1) > (1 + 1), (b & 1), (1 + 1))))
        pto.store(o + i, t3)
