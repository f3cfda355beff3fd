import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = b
        t1 = b
        if t0 >= t0:
            t1 = ((-t0) - (2.0 - 0.25))
        t2 = b
        if b < b:
            t2 = (-(((0.25 - t0) - (a * b)) - t1))
        pto.store(o + i, t2)
