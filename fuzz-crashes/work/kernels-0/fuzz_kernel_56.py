import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = b
        t1 = ((1.5 - ((-a) - 0.25)) + pto.select((pto.select(b > a, b, a) * t0) < ((b - t0) * pto.select(1.5 < 1.5, 1.5, 1.5)), (pto.select(b > a, b, a) * t0), ((b - t0) * pto.select(1.5 < 1.5, 1.5, 1.5))))
        t2 = (-(-((-3.0 - 2.0) * (t1 - 1.5))))
        t3 = (pto.select(((t1 * t0) - (b - t0)) <= pto.select(t1 >= (1.5 * 1.5), t1, (1.5 * 1.5)), ((t1 * t0) - (b - t0)), pto.select(t1 >= (1.5 * 1.5), t1, (1.5 * 1.5))) + t2)
        t4 = (((-(t2 - a)) - b) + pto.select(a <= ((t3 * a) + (2.0 + t0)), a, ((t3 * a) + (2.0 + t0))))
        t5 = pto.select((-((t3 + 0.25) * (-3.0 + 0.25))) < t1, (-((t3 + 0.25) * (-3.0 + 0.25))), t1)
        pto.store(o + i, t5)
