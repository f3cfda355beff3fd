import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = pto.select(1.5 <= (-(-(-2.0))), 1.5, (-(-(-2.0))))
        t1 = (-b)
        t2 = 2.0
        pto.store(o + i, t2)
