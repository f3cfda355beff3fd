import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (a - (((-a) + (b * a)) & ((-100) - (b + b))))
        t1 = (pto.select(b == t0, b, t0) & b)
        t2 = 1
        t3 = t0
        if a >= a:
            t3 = pto.select(a <= (a - a), a, (a - a))
        t4 = t1
        if t3 >= b:
            t4 = ((-((t0 ^ t0) * (-t3))) | ((-(t0 - t1)) & (pto.select(-7 < -7, -7, -7) + a)))
        pto.store(o + i, t4)
