import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = ((b + ((3 ^ b) * 1)) + (((3 | b) - (-a)) - 3))
        t1 = 100
        t2 = a
        if t0 < t1:
            t2 = (-100)
        pto.store(o + i, t2)
