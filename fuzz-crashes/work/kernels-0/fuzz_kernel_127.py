import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = ((-((b & 1) & (3 | 1))) & a)
        t1 = b
        if b >= t0:
            t1 = 3
        t2 = b
        pto.store(o + i, t2)
