import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = a
        t1 = (-pto.select((-(a + b)) == ((t0 + -3.0) + a), (-(a + b)), ((t0 + -3.0) + a)))
        t2 = 1.5
        t3 = (-(-(-(t0 * 1.5))))
        t4 = 1.5
        pto.store(o + i, t4)
