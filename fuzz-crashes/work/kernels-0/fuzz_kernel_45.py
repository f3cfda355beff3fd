import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = ((((-a) + -7) | -7) * (((a ^ a) * (b - b)) - ((100 ^ a) & (-1))))
        t1 = t0
        t2 = a
        if a >= b:
            t2 = (-(b - (pto.select(100 == a, 100, a) | -7)))
        t3 = ((((a | 3) | (t0 - t2)) * t2) ^ ((pto.select(t0 <= t0, t0, t0) & 100) ^ a))
        t4 = a
        if t2 >= b:
            t4 = t3
        t5 = (-100)
        acc = a
        for j in range(3):
            acc = acc + t5
        pto.store(o + i, acc)
