import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = pto.select(((-b) + 0.25) <= (a - pto.select((a * b) != pto.select(a > -3.0, a, -3.0), (a * b), pto.select(a > -3.0, a, -3.0))), ((-b) + 0.25), (a - pto.select((a * b) != pto.select(a > -3.0, a, -3.0), (a * b), pto.select(a > -3.0, a, -3.0))))
        t1 = a
        t2 = (pto.select(b <= pto.select(t0 < (b + b), t0, (b + b)), b, pto.select(t0 < (b + b), t0, (b + b))) + t0)
        t3 = b
        if t1 >= a:
            t3 = (-3.0 - (pto.select((b * b) <= a, (b * b), a) - ((b * 2.0) - (t2 - 0.25))))
        t4 = pto.select((pto.select(b == (t1 - 0.25), b, (t1 - 0.25)) - (-pto.select(1.5 < 0.25, 1.5, 0.25))) == (b + 2.0), (pto.select(b == (t1 - 0.25), b, (t1 - 0.25)) - (-pto.select(1.5 < 0.25, 1.5, 0.25))), (b + 2.0))
        t5 = ((((b + a) * (t1 - t2)) - t1) + 0.25)
        pto.store(o + i, t5)
