import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (((-7 * pto.select(1 > 100, 1, 100)) | ((a + 3) & a)) & (pto.select(pto.select(a < -7, a, -7) <= (3 + a), pto.select(a < -7, a, -7), (3 + a)) - ((-1) & (b ^ b))))
        t1 = b
        if b >= b:
            t1 = (((-(t0 | 1)) & (a - (-a))) ^ a)
        t2 = a
        if b < t1:
            t2 = ((t1 ^ t1) - b)
        t3 = a
        if a >= a:
            t3 = pto.select(t2 <= (((1 - t0) & (--7)) - (t2 - (t0 ^ 1))), t2, (((1 - t0) & (--7)) - (t2 - (t0 ^ 1))))
        t4 = ((pto.select((100 | t3) <= 1, (100 | t3), 1) | ((b * t0) | (-t1))) * (((-t2) * (1 - t2)) ^ pto.select((t1 & t1) >= pto.select(-7 >= a, -7, a), (t1 & t1), pto.select(-7 >= a, -7, a))))
        t5 = t0
        if t3 < t1:
            t5 = ((3 | b) * (pto.select((t0 * t3) == (t1 & 1), (t0 * t3), (t1 & 1)) * ((t1 ^ t2) & (-100))))
        pto.store(o + i, t5)
