import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = ((pto.select(3 < a, 3, a) + (b - a)) - pto.select(-7 < b, -7, b))
        t1 = b
        if t0 >= b:
            t1 = 1
        pto.store(o + i, t1)
