import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (pto.select(((a & 1) & (3 | b)) > (pto.select(b < a, b, a) | pto.select(a != a, a, a)), ((a & 1) & (3 | b)), (pto.select(b < a, b, a) | pto.select(a != a, a, a))) - b)
        t1 = a
        if t0 >= b:
            t1 = a
        t2 = (1 | (t0 ^ b))
        t3 = b
        if t1 < t1:
            t3 = (-(a & ((t0 - t0) ^ (t2 * t2))))
        pto.store(o + i, t3)
