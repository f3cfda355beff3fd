import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (pto.select((a | (1 * a)) == a, (a | (1 * a)), a) ^ (pto.select((a + a) == (3 * a), (a + a), (3 * a)) ^ 100))
        t1 = pto.select((b ^ ((3 | 3) & (1 - t0))) > ((t0 * (-7 * 3)) | pto.select((100 ^ t0) >= b, (100 ^ t0), b)), (b ^ ((3 | 3) & (1 - t0))), ((t0 * (-7 * 3)) | pto.select((100 ^ t0) >= b, (100 ^ t0), b)))
        t2 = ((t0 * ((b * a) ^ (t0 * t0))) - (((a ^ a) | t0) * a))
        t3 = a
        if a >= t0:
            t3 = (1 + t0)
        t4 = (((pto.select(3 == t1, 3, t1) & (-7 - a)) - ((1 - t3) ^ (3 ^ t0))) | (((t2 ^ 1) & pto.select(t2 < t1, t2, t1)) ^ t3))
        t5 = t2
        if b < a:
            t5 = (-(((1 * t4) - (t1 ^ 100)) * pto.select((3 & t2) != (-a), (3 & t2), (-a))))
        acc2 = t5
        j = i % 5
        while True:
            if j >= 5:
                break
            j += 1
            acc2 = acc2 + t5
        while a < b:
            pass
        else:
            pass
        pto.store(o + i, acc2)
