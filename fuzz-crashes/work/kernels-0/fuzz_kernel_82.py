import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (pto.select(a >= (0.25 - (b + a)), a, (0.25 - (b + a))) - ((-(b + b)) + ((-3.0 + a) - b)))
        t1 = pto.select(a > a, a, a)
        t2 = t0
        if b >= t0:
            t2 = 1.5
        t3 = t0
        if t2 >= a:
            t3 = t2
        t4 = ((1.5 * pto.select(pto.select(2.0 != b, 2.0, b) <= -3.0, pto.select(2.0 != b, 2.0, b), -3.0)) + pto.select(((1.5 + a) - (t1 + b)) == (t1 * t3), ((1.5 + a) - (t1 + b)), (t1 * t3)))
        t5 = (t0 * pto.select(((t3 * 2.0) * (t1 + -3.0)) > (a - (a + t2)), ((t3 * 2.0) * (t1 + -3.0)), (a - (a + t2))))
        pto.store(o + i, t5)
