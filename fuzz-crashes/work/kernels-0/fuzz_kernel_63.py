import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = pto.select((((-b) + (b + 1.5)) - a) != (((b + b) * 1.5) - ((a * b) + (a * b))), (((-b) + (b + 1.5)) - a), (((b + b) * 1.5) - ((a * b) + (a * b))))
        t1 = (pto.select((b * a) == pto.select((b + 0.25) == (-3.0 + a), (b + 0.25), (-3.0 + a)), (b * a), pto.select((b + 0.25) == (-3.0 + a), (b + 0.25), (-3.0 + a))) * (-(-0.25)))
        t2 = b
        if t0 >= t0:
            t2 = ((1.5 + pto.select((t1 + b) > (-b), (t1 + b), (-b))) * pto.select(pto.select((-t0) == t1, (-t0), t1) < t1, pto.select((-t0) == t1, (-t0), t1), t1))
        pto.store(o + i, t2)
