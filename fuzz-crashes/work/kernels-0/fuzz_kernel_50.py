import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (-((b - (b * -3.0)) * ((b - 0.25) + b)))
        t1 = t0
        if t0 >= t0:
            t1 = t0
        t2 = (pto.select(((t0 * b) + -3.0) == ((-t1) * 0.25), ((t0 * b) + -3.0), ((-t1) * 0.25)) + 1.5)
        t3 = ((((b - -3.0) * (t1 - -3.0)) + ((-t2) - b)) - pto.select(t0 <= a, t0, a))
        pto.store(o + i, t3)
