import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (-b)
        t1 = b
        if b < t0:
            t1 = ((t0 & b) ^ b)
        t2 = b
        t3 = pto.select((-t0) != (((-t2) & (3 | -7)) | pto.select(t0 <= (3 & b), t0, (3 & b))), (-t0), (((-t2) & (3 | -7)) | pto.select(t0 <= (3 & b), t0, (3 & b))))
        t4 = t2
        if b >= t0:
            t4 = -7
        pto.store(o + i, t4)
