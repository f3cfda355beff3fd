import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (-b)
        t1 = pto.select((-(-(t0 - b))) < pto.select(t0 > (-t0), t0, (-t0)), (-(-(t0 - b))), pto.select(t0 > (-t0), t0, (-t0)))
        t2 = t0
        if t0 >= t1:
            t2 = ((((-a) | (1 & 100)) + ((t1 & -7) - pto.select(t1 != -7, t1, -7))) & t0)
        t3 = pto.select(((3 ^ (3 * t2)) | (t0 | 3)) == (((t2 - t0) & (1 * t2)) ^ b), ((3 ^ (3 * t2)) | (t0 | 3)), (((t2 - t0) & (1 * t2)) ^ b))
        t4 = (((-100) - (100 - (t0 * t0))) + ((t1 | a) * ((b | 1) & (b - b))))
        t5 = (((b + (b ^ 1)) & ((t4 * t1) * b)) + (t2 ^ (-(t1 & t4))))
        pto.store(o + i, t5)
