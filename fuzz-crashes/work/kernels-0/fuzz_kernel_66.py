import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (-(((b & -7) * (-a)) ^ pto.select(-7 >= a, -7, a)))
        t1 = a
        if t0 >= b:
            t1 = ((t0 - a) * (((a ^ t0) * a) | ((100 ^ a) - (-1))))
        t2 = t1
        if a >= b:
            t2 = ((((-7 * 3) ^ (a + b)) ^ ((3 & a) * (-7 | t1))) + (t0 * ((a * 3) * (t0 * a))))
        t3 = t2
        t4 = b
        if t2 >= t0:
            t4 = ((-1) - pto.select((-(100 | t0)) < (-(t1 & -7)), (-(100 | t0)), (-(t1 & -7))))
        t5 = t3
        acc = a
        for j in range(3):
            acc = acc + t5
        pto.store(o + i, acc)
