import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (pto.select((a - (a - b)) < (-(b - 2.0)), (a - (a - b)), (-(b - 2.0))) - pto.select((2.0 * pto.select(a != b, a, b)) > pto.select((a - a) < (a - b), (a - a), (a - b)), (2.0 * pto.select(a != b, a, b)), pto.select((a - a) < (a - b), (a - a), (a - b))))
        t1 = 2.0
        t2 = (((-pto.select(1.5 >= b, 1.5, b)) - (a + t1)) + t1)
        t3 = 1.5
        pto.store(o + i, t3)
