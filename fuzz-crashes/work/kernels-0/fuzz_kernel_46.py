import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (((-(-7 + b)) | a) | b)
        t1 = b
        if a >= t0:
            t1 = pto.select(pto.select((b - (a & 1)) == (a ^ t0), (b - (a & 1)), (a ^ t0)) < (((3 | t0) ^ (3 - a)) | 1), pto.select((b - (a & 1)) == (a ^ t0), (b - (a & 1)), (a ^ t0)), (((3 | t0) ^ (3 - a)) | 1))
        t2 = b
        if t0 < t1:
            t2 = pto.select(((-7 - a) + 3) == (((-t1) - (a & 1)) * (a ^ -7)), ((-7 - a) + 3), (((-t1) - (a & 1)) * (a ^ -7)))
        t3 = (((3 + (t2 | t1)) | (a - (a + t2))) & a)
        t4 = pto.select((t2 ^ ((3 + t2) ^ (t3 & t0))) < t2, (t2 ^ ((3 + t2) ^ (t3 & t0))), t2)
        t5 = pto.select(((a | (-7 ^ t3)) + ((t3 - t2) + t2)) <= t4, ((a | (-7 ^ t3)) + ((t3 - t2) + t2)), t4)
        pto.store(o + i, t5)
