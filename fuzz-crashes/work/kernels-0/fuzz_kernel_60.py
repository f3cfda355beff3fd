import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = ((pto.select((3 | 100) < pto.select(3 == a, 3, a), (3 | 100), pto.select(3 == a, 3, a)) | -7) + 100)
        t1 = b
        if a >= t0:
            t1 = pto.select((b * (1 | t0)) <= (((1 ^ b) + pto.select(t0 != t0, t0, t0)) & b), (b * (1 | t0)), (((1 ^ b) + pto.select(t0 != t0, t0, t0)) & b))
        acc2 = t1
        for j in range(i % 3, 3):
            acc2 = acc2 + t1
        pto.store(o + i, acc2)
