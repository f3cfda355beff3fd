import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (((-pto.select(2.0 == 0.25, 2.0, 0.25)) - (pto.select(a <= b, a, b) - (a - b))) - a)
        t1 = t0
        if a < b:
            t1 = a
        pto.store(o + i, t1)
