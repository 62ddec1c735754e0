; hpvm's own test program, written as HPVM's GenHPVM writes HPVM IR (LLVM 9 text) for an
; iterative 2-D kernel in the CUDA style: typed pointers, bare in/out attributes, packed
; empty %struct.out returns, a root that creates one internal node (createNode, no
; dimension) which replicates the leaf 2-D (createNode2D) over a grid rounded up to whole
; 8x8 blocks, hints as named metadata, a main that launches the root once.
;
; One Jacobi sweep of a w x h plate: x = instance id x is the column (the fastest index,
; src[y*w + x]), the body under `if (x < w && y < h)`, the border copied, each inner point
; the mean of its four neighbours (0.25 * (left + right + up + down), in that order).
; ModuleID = 'jacobi.c'
source_filename = "jacobi.c"
target datalayout = "e-m:e-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%struct.Root = type { float*, i64, float*, i64, i64, i64, i64, i64, %struct.out.JacobiRoot }
%struct.out.jacobi = type <{}>
%struct.out.JacobiWrapper = type <{}>
%struct.out.JacobiRoot = type <{}>

; Function Attrs: nounwind uwtable
define dso_local %struct.out.jacobi @jacobi_cloned(float* in %src, i64 %bytes_src, float* out %dst, i64 %bytes_dst, i64 %w, i64 %h) #0 {
entry:
  %node = call i8* @llvm.hpvm.getNode()
  %x = call i64 @llvm.hpvm.getNodeInstanceID.x(i8* %node)
  %y = call i64 @llvm.hpvm.getNodeInstanceID.y(i8* %node)
  %in.x = icmp slt i64 %x, %w
  %in.y = icmp slt i64 %y, %h
  %inside = and i1 %in.x, %in.y
  br i1 %inside, label %if.then, label %if.end

if.then:                                          ; preds = %entry
  %row = mul nsw i64 %y, %w
  %i = add nsw i64 %row, %x
  %x.first = icmp eq i64 %x, 0
  %y.first = icmp eq i64 %y, 0
  %w.last = add nsw i64 %w, -1
  %h.last = add nsw i64 %h, -1
  %x.last = icmp eq i64 %x, %w.last
  %y.last = icmp eq i64 %y, %h.last
  %e1 = or i1 %x.first, %y.first
  %e2 = or i1 %e1, %x.last
  %edge = or i1 %e2, %y.last
  br i1 %edge, label %border, label %inner

border:                                           ; preds = %if.then
  %ps = getelementptr inbounds float, float* %src, i64 %i
  %s = load float, float* %ps, align 4, !tbaa !5
  %pd = getelementptr inbounds float, float* %dst, i64 %i
  store float %s, float* %pd, align 4, !tbaa !5
  br label %if.end

inner:                                            ; preds = %if.then
  %i.l = add nsw i64 %i, -1
  %i.r = add nsw i64 %i, 1
  %i.u = sub nsw i64 %i, %w
  %i.d = add nsw i64 %i, %w
  %pl = getelementptr inbounds float, float* %src, i64 %i.l
  %l = load float, float* %pl, align 4, !tbaa !5
  %pr = getelementptr inbounds float, float* %src, i64 %i.r
  %r = load float, float* %pr, align 4, !tbaa !5
  %pu = getelementptr inbounds float, float* %src, i64 %i.u
  %u = load float, float* %pu, align 4, !tbaa !5
  %pdn = getelementptr inbounds float, float* %src, i64 %i.d
  %d = load float, float* %pdn, align 4, !tbaa !5
  %lr = fadd float %l, %r
  %lru = fadd float %lr, %u
  %sum = fadd float %lru, %d
  %mean = fmul float %sum, 2.500000e-01
  %pout = getelementptr inbounds float, float* %dst, i64 %i
  store float %mean, float* %pout, align 4, !tbaa !5
  br label %if.end

if.end:                                           ; preds = %inner, %border, %entry
  ret %struct.out.jacobi undef
}

; Function Attrs: nounwind uwtable
define dso_local %struct.out.JacobiWrapper @JacobiWrapper_cloned(float* in %src, i64 %bytes_src, float* out %dst, i64 %bytes_dst, i64 %w, i64 %h, i64 %gx, i64 %gy) #0 {
entry:
  %jacobi_cloned.node = call i8* @llvm.hpvm.createNode2D(i8* bitcast (%struct.out.jacobi (float*, i64, float*, i64, i64, i64)* @jacobi_cloned to i8*), i64 %gx, i64 %gy)
  call void @llvm.hpvm.bind.input(i8* %jacobi_cloned.node, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(i8* %jacobi_cloned.node, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %jacobi_cloned.node, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %jacobi_cloned.node, i32 3, i32 3, i1 false)
  call void @llvm.hpvm.bind.input(i8* %jacobi_cloned.node, i32 4, i32 4, i1 false)
  call void @llvm.hpvm.bind.input(i8* %jacobi_cloned.node, i32 5, i32 5, i1 false)
  ret %struct.out.JacobiWrapper undef
}

; Function Attrs: nounwind uwtable
define dso_local %struct.out.JacobiRoot @JacobiRoot_cloned(float* in %src, i64 %bytes_src, float* out %dst, i64 %bytes_dst, i64 %w, i64 %h, i64 %gx, i64 %gy) #0 {
entry:
  %JacobiWrapper_cloned.node = call i8* @llvm.hpvm.createNode(i8* bitcast (%struct.out.JacobiWrapper (float*, i64, float*, i64, i64, i64, i64, i64)* @JacobiWrapper_cloned to i8*))
  call void @llvm.hpvm.bind.input(i8* %JacobiWrapper_cloned.node, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(i8* %JacobiWrapper_cloned.node, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %JacobiWrapper_cloned.node, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %JacobiWrapper_cloned.node, i32 3, i32 3, i1 false)
  call void @llvm.hpvm.bind.input(i8* %JacobiWrapper_cloned.node, i32 4, i32 4, i1 false)
  call void @llvm.hpvm.bind.input(i8* %JacobiWrapper_cloned.node, i32 5, i32 5, i1 false)
  call void @llvm.hpvm.bind.input(i8* %JacobiWrapper_cloned.node, i32 6, i32 6, i1 false)
  call void @llvm.hpvm.bind.input(i8* %JacobiWrapper_cloned.node, i32 7, i32 7, i1 false)
  ret %struct.out.JacobiRoot undef
}

; Function Attrs: nounwind uwtable
define dso_local i32 @main() local_unnamed_addr #1 {
entry:
  %RootArgs = alloca %struct.Root, align 8
  %0 = bitcast %struct.Root* %RootArgs to i8*
  call void @llvm.hpvm.init()
  %graphID = call i8* @llvm.hpvm.launch(i8* bitcast (%struct.out.JacobiRoot (float*, i64, float*, i64, i64, i64, i64, i64)* @JacobiRoot_cloned to i8*), i8* nonnull %0, i1 false)
  call void @llvm.hpvm.wait(i8* %graphID)
  call void @llvm.hpvm.cleanup()
  ret i32 0
}

; Function Attrs: nounwind
declare i8* @llvm.hpvm.getNode() #2

; Function Attrs: nounwind
declare i64 @llvm.hpvm.getNodeInstanceID.x(i8*) #2

; Function Attrs: nounwind
declare i64 @llvm.hpvm.getNodeInstanceID.y(i8*) #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.createNode(i8*) #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.createNode2D(i8*, i64, i64) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.bind.input(i8*, i32, i32, i1) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.init() #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.launch(i8*, i8*, i1) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.wait(i8*) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.cleanup() #2

attributes #0 = { nounwind uwtable "correctly-rounded-divide-sqrt-fp-math"="false" "disable-tail-calls"="false" "less-precise-fpmad"="false" "min-legal-vector-width"="0" "no-frame-pointer-elim"="false" "no-infs-fp-math"="false" "no-jump-tables"="false" "no-nans-fp-math"="false" "no-signed-zeros-fp-math"="false" "no-trapping-math"="false" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "unsafe-fp-math"="false" "use-soft-float"="false" }
attributes #1 = { nounwind uwtable "no-frame-pointer-elim"="false" "target-cpu"="x86-64" }
attributes #2 = { nounwind }

!llvm.module.flags = !{!0}
!llvm.ident = !{!1}
!hpvm_hint_cpu = !{!2, !3, !8}
!hpvm_hint_gpu = !{}
!hpvm_hint_cpu_gpu = !{}
!hpvm_hint_cudnn = !{}
!hpvm_hint_promise = !{}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{!"clang version 9.0.0"}
!2 = !{%struct.out.jacobi (float*, i64, float*, i64, i64, i64)* @jacobi_cloned}
!3 = !{%struct.out.JacobiWrapper (float*, i64, float*, i64, i64, i64, i64, i64)* @JacobiWrapper_cloned}
!4 = !{!"Simple C/C++ TBAA"}
!5 = !{!6, !6, i64 0}
!6 = !{!"float", !7, i64 0}
!7 = !{!"omnipotent char", !4, i64 0}
!8 = !{%struct.out.JacobiRoot (float*, i64, float*, i64, i64, i64, i64, i64)* @JacobiRoot_cloned}
