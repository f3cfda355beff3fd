import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = ((pto.select(a > (3 - a), a, (3 - a)) - ((1 & -7) | (a - b))) - b)
        pto.store(o + i, t0)
