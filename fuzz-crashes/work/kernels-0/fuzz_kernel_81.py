import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = a
        t1 = (pto.select(b < t0, b, t0) * (-7 & (-b)))
        t2 = a
        if b >= t0:
            t2 = (((b ^ (-b)) | (-(t1 ^ t0))) & ((-(a ^ 1)) ^ t1))
        t3 = pto.select(t2 < (pto.select(t0 <= 3, t0, 3) - t1), t2, (pto.select(t0 <= 3, t0, 3) - t1))
        t4 = pto.select(t1 >= pto.select(t3 > (pto.select(t2 == b, t2, b) | (-7 & 100)), t3, (pto.select(t2 == b, t2, b) | (-7 & 100))), t1, pto.select(t3 > (pto.select(t2 == b, t2, b) | (-7 & 100)), t3, (pto.select(t2 == b, t2, b) | (-7 & 100))))
        t5 = (-3)
        acc2 = t5
        for j in range(i % 4, 4):
            acc2 = acc2 + t5
        pto.store(o + i, acc2)
