import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = a
        t1 = pto.select((((b * b) - (a * b)) * ((-t0) * (-0.25))) < pto.select(((-3.0 * a) + (-t0)) <= (a * (-0.25)), ((-3.0 * a) + (-t0)), (a * (-0.25))), (((b * b) - (a * b)) * ((-t0) * (-0.25))), pto.select(((-3.0 * a) + (-t0)) <= (a * (-0.25)), ((-3.0 * a) + (-t0)), (a * (-0.25))))
        t2 = (-((pto.select(0.25 > a, 0.25, a) + (1.5 * b)) * ((a - b) * t1)))
        t3 = t2
        if t2 >= t2:
            t3 = (0.25 - (-b))
        acc = a
        for j in range(3):
            acc = acc + t3
        pto.store(o + i, acc)
