import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (pto.select(a <= b, a, b) + (-(a + (b * a))))
        t1 = 2.0
        t2 = b
        if t1 >= b:
            t2 = a
        pto.store(o + i, t2)
