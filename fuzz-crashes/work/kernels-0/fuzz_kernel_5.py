import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (((pto.select(b > b, b, b) - a) - (-(2.0 + b))) + a)
        t1 = a
        if t0 >= b:
            t1 = pto.select(1.5 != (-((-a) - 1.5)), 1.5, (-((-a) - 1.5)))
        pto.store(o + i, t1)
