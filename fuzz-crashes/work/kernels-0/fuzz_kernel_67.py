import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (-(a * a))
        t1 = -7
        t2 = t1
        if t1 < a:
            t2 = pto.select(((-t1) & ((1 & -7) + 100)) != (pto.select((b * t1) > (-7 * t0), (b * t1), (-7 * t0)) + ((a | t0) & b)), ((-t1) & ((1 & -7) + 100)), (pto.select((b * t1) > (-7 * t0), (b * t1), (-7 * t0)) + ((a | t0) & b)))
        t3 = t1
        if t1 >= t1:
            t3 = ((3 - ((1 * t0) ^ (1 - t1))) + (pto.select((a | b) <= (t1 - 1), (a | b), (t1 - 1)) | (-(t1 ^ -7))))
        pto.store(o + i, t3)
