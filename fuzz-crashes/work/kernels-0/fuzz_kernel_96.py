import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = ((pto.select((b * a) <= (b + -3.0), (b * a), (b + -3.0)) - pto.select(a > (a - 1.5), a, (a - 1.5))) * (-(-a)))
        t1 = pto.select(((2.0 * pto.select(1.5 <= 0.25, 1.5, 0.25)) - (-3.0 - pto.select(a <= a, a, a))) != (2.0 - pto.select(-3.0 > (b + 0.25), -3.0, (b + 0.25))), ((2.0 * pto.select(1.5 <= 0.25, 1.5, 0.25)) - (-3.0 - pto.select(a <= a, a, a))), (2.0 - pto.select(-3.0 > (b + 0.25), -3.0, (b + 0.25))))
        t2 = t0
        if t1 >= b:
            t2 = (-pto.select(((a - -3.0) + (t0 + a)) != t0, ((a - -3.0) + (t0 + a)), t0))
        t3 = t2
        if t2 >= t1:
            t3 = t2
        t4 = t3
        pto.store(o + i, t4)
