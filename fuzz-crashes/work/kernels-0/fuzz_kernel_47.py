import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = b
        t1 = b
        if t0 >= b:
            t1 = pto.select(pto.select((t0 + a) > ((-t0) - (-a)), (t0 + a), ((-t0) - (-a))) > (-((-a) - pto.select(a > 0.25, a, 0.25))), pto.select((t0 + a) > ((-t0) - (-a)), (t0 + a), ((-t0) - (-a))), (-((-a) - pto.select(a > 0.25, a, 0.25))))
        pto.store(o + i, t1)
