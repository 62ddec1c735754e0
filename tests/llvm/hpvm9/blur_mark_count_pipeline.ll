; hpvm's own test program, written as HPVM's GenHPVM writes HPVM IR (LLVM 9 text) for an
; image pipeline in the style of HPVM's pipeline benchmark: typed pointers (float*, i32*),
; bare in/out attributes, packed %struct.out.* returns, node functions passed through bitcast
; constant expressions, declarations where GenHPVM leaves them (after the first function
; that uses them), every hint list of the release (the two kernels under the GPU hint, as
; DEVICE=GPU_TARGET puts them), a main that fills the root's argument struct and launches
; the graph in a loop, zeroing the counter before each launch.
;
; Three levels. EdgeRoot creates two internal nodes replicated 2-D over 8x8 blocks
; (createNode2D at the middle level; the block counts (w + 7) / 8 and (h + 7) / 8 are sdiv
; arithmetic of the root's ports) and one leaf, count:
;   BlurBlock -> blur (8x8): B = I convolved with the 3x3 filter F (a separate array), the
;     image's edge clamped, the filter loops unrolled as clang -O2 unrolls them (i outer,
;     j inner, the sum from 0.0); the pixel (gx, gy) is the parent's instance id times the
;     leaf's instance count plus its id (getParentNode, getNumNodeInstances).
;   MarkBlock -> mark (8x8): E[g] = |B[g] - I[g]| > theta (i32 0 or 1, llvm.fabs.f32), and
;     C[0] += E[g] with llvm.hpvm.atomic.add on the i8* cast of C.
;   count (one instance): C[0] and C[0] / (w * h) (the pixel count from E's byte size).
; B's pointer reaches MarkBlock from the root while its size comes over a one-to-one edge
; from BlurBlock (block b of mark reads only what block b of blur wrote), as the pipeline
; benchmark passes bytesIs; E's size reaches count over an all-to-all edge. count's two
; outputs are the root's two outputs. No leaf loops: every instance runs straight-line code.
; ModuleID = 'blurmark.c'
source_filename = "blurmark.c"
target datalayout = "e-m:e-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%struct.Root = type { float*, i64, float*, i64, float*, i64, i32*, i64, i32*, i64, i64, i64, float, %struct.out.EdgeRoot }
%struct.out.blur = type <{ i64 }>
%struct.out.BlurBlock = type <{ i64 }>
%struct.out.mark = type <{ i64 }>
%struct.out.MarkBlock = type <{ i64 }>
%struct.out.count = type <{ i32, float }>
%struct.out.EdgeRoot = type <{ i32, float }>

; Function Attrs: nounwind uwtable
define dso_local i32 @main() local_unnamed_addr #0 {
entry:
  %RootArgs = alloca %struct.Root, align 8
  %0 = bitcast %struct.Root* %RootArgs to i8*
  call void @llvm.lifetime.start.p0i8(i64 112, i8* nonnull %0) #4
  %call = tail call noalias i8* @malloc(i64 4096) #4
  %1 = bitcast i8* %call to float*
  %call1 = tail call noalias i8* @malloc(i64 36) #4
  %2 = bitcast i8* %call1 to float*
  %call2 = tail call noalias i8* @malloc(i64 4096) #4
  %3 = bitcast i8* %call2 to float*
  %call3 = tail call noalias i8* @malloc(i64 4096) #4
  %4 = bitcast i8* %call3 to i32*
  %call4 = tail call noalias i8* @malloc(i64 4) #4
  %5 = bitcast i8* %call4 to i32*
  %I = getelementptr inbounds %struct.Root, %struct.Root* %RootArgs, i64 0, i32 0
  store float* %1, float** %I, align 8, !tbaa !12
  %bytes_I = getelementptr inbounds %struct.Root, %struct.Root* %RootArgs, i64 0, i32 1
  store i64 4096, i64* %bytes_I, align 8, !tbaa !16
  %F = getelementptr inbounds %struct.Root, %struct.Root* %RootArgs, i64 0, i32 2
  store float* %2, float** %F, align 8, !tbaa !17
  %bytes_F = getelementptr inbounds %struct.Root, %struct.Root* %RootArgs, i64 0, i32 3
  store i64 36, i64* %bytes_F, align 8, !tbaa !18
  %B = getelementptr inbounds %struct.Root, %struct.Root* %RootArgs, i64 0, i32 4
  store float* %3, float** %B, align 8, !tbaa !19
  %bytes_B = getelementptr inbounds %struct.Root, %struct.Root* %RootArgs, i64 0, i32 5
  store i64 4096, i64* %bytes_B, align 8, !tbaa !20
  %E = getelementptr inbounds %struct.Root, %struct.Root* %RootArgs, i64 0, i32 6
  store i32* %4, i32** %E, align 8, !tbaa !21
  %bytes_E = getelementptr inbounds %struct.Root, %struct.Root* %RootArgs, i64 0, i32 7
  store i64 4096, i64* %bytes_E, align 8, !tbaa !22
  %C = getelementptr inbounds %struct.Root, %struct.Root* %RootArgs, i64 0, i32 8
  store i32* %5, i32** %C, align 8, !tbaa !23
  %bytes_C = getelementptr inbounds %struct.Root, %struct.Root* %RootArgs, i64 0, i32 9
  store i64 4, i64* %bytes_C, align 8, !tbaa !24
  %w = getelementptr inbounds %struct.Root, %struct.Root* %RootArgs, i64 0, i32 10
  store i64 32, i64* %w, align 8, !tbaa !25
  %h = getelementptr inbounds %struct.Root, %struct.Root* %RootArgs, i64 0, i32 11
  store i64 32, i64* %h, align 8, !tbaa !26
  %theta = getelementptr inbounds %struct.Root, %struct.Root* %RootArgs, i64 0, i32 12
  store float 0x3FA99999A0000000, float* %theta, align 8, !tbaa !27
  call void @llvm.hpvm.init()
  call void @llvm_hpvm_track_mem(i8* %call, i64 4096) #4
  call void @llvm_hpvm_track_mem(i8* %call1, i64 36) #4
  call void @llvm_hpvm_track_mem(i8* %call2, i64 4096) #4
  call void @llvm_hpvm_track_mem(i8* %call3, i64 4096) #4
  call void @llvm_hpvm_track_mem(i8* %call4, i64 4) #4
  br label %for.body

for.body:                                         ; preds = %for.body, %entry
  %run.0 = phi i32 [ 0, %entry ], [ %inc, %for.body ]
  store i32 0, i32* %5, align 4, !tbaa !8
  %graphID = call i8* @llvm.hpvm.launch(i8* bitcast (%struct.out.EdgeRoot (float*, i64, float*, i64, float*, i64, i32*, i64, i32*, i64, i64, i64, float)* @EdgeRoot_cloned to i8*), i8* nonnull %0, i1 false)
  call void @llvm.hpvm.wait(i8* %graphID)
  call void @llvm_hpvm_request_mem(i8* %call4, i64 4) #4
  %inc = add nuw nsw i32 %run.0, 1
  %exitcond = icmp eq i32 %inc, 8
  br i1 %exitcond, label %for.end, label %for.body

for.end:                                          ; preds = %for.body
  call void @llvm_hpvm_request_mem(i8* %call3, i64 4096) #4
  call void @llvm_hpvm_untrack_mem(i8* %call) #4
  call void @llvm_hpvm_untrack_mem(i8* %call1) #4
  call void @llvm_hpvm_untrack_mem(i8* %call2) #4
  call void @llvm_hpvm_untrack_mem(i8* %call3) #4
  call void @llvm_hpvm_untrack_mem(i8* %call4) #4
  call void @llvm.hpvm.cleanup()
  call void @llvm.lifetime.end.p0i8(i64 112, i8* nonnull %0) #4
  ret i32 0
}

; Function Attrs: argmemonly nounwind
declare void @llvm.lifetime.start.p0i8(i64 immarg, i8* nocapture) #1

; Function Attrs: nofree nounwind
declare dso_local noalias i8* @malloc(i64) local_unnamed_addr #2

declare dso_local void @llvm_hpvm_track_mem(i8*, i64) local_unnamed_addr #3

declare dso_local void @llvm_hpvm_request_mem(i8*, i64) local_unnamed_addr #3

declare dso_local void @llvm_hpvm_untrack_mem(i8*) local_unnamed_addr #3

; Function Attrs: argmemonly nounwind
declare void @llvm.lifetime.end.p0i8(i64 immarg, i8* nocapture) #1

; Function Attrs: nounwind uwtable
define dso_local %struct.out.blur @blur_cloned(float* in %I, i64 %bytes_I, float* in %F, i64 %bytes_F, float* out %B, i64 %bytes_B, i64 %w, i64 %h) #0 {
entry:
  %node = call i8* @llvm.hpvm.getNode()
  %parent = call i8* @llvm.hpvm.getParentNode(i8* %node)
  %lx = call i64 @llvm.hpvm.getNodeInstanceID.x(i8* %node)
  %ly = call i64 @llvm.hpvm.getNodeInstanceID.y(i8* %node)
  %dimx = call i64 @llvm.hpvm.getNumNodeInstances.x(i8* %node)
  %dimy = call i64 @llvm.hpvm.getNumNodeInstances.y(i8* %node)
  %bx = call i64 @llvm.hpvm.getNodeInstanceID.x(i8* %parent)
  %by = call i64 @llvm.hpvm.getNodeInstanceID.y(i8* %parent)
  %mul = mul nsw i64 %bx, %dimx
  %gx = add nsw i64 %mul, %lx
  %mul1 = mul nsw i64 %by, %dimy
  %gy = add nsw i64 %mul1, %ly
  %cmp = icmp slt i64 %gx, %w
  %cmp2 = icmp slt i64 %gy, %h
  %or.cond = and i1 %cmp, %cmp2
  br i1 %or.cond, label %if.then, label %if.end

if.then:                                          ; preds = %entry
  %hlast = add nsw i64 %h, -1
  %wlast = add nsw i64 %w, -1
  %sub = add nsw i64 %gy, -1
  %cmp3 = icmp sgt i64 %gy, 0
  %y0 = select i1 %cmp3, i64 %sub, i64 0
  %add = add nsw i64 %gy, 1
  %cmp4 = icmp slt i64 %gy, %hlast
  %y2 = select i1 %cmp4, i64 %add, i64 %hlast
  %sub5 = add nsw i64 %gx, -1
  %cmp6 = icmp sgt i64 %gx, 0
  %x0 = select i1 %cmp6, i64 %sub5, i64 0
  %add7 = add nsw i64 %gx, 1
  %cmp8 = icmp slt i64 %gx, %wlast
  %x2 = select i1 %cmp8, i64 %add7, i64 %wlast
  %row0 = mul nsw i64 %y0, %w
  %row1 = mul nsw i64 %gy, %w
  %row2 = mul nsw i64 %y2, %w
  %i00 = add nsw i64 %row0, %x0
  %arrayidx = getelementptr inbounds float, float* %I, i64 %i00
  %0 = load float, float* %arrayidx, align 4, !tbaa !5
  %1 = load float, float* %F, align 4, !tbaa !5
  %mul9 = fmul float %0, %1
  %add10 = fadd float %mul9, 0.000000e+00
  %i01 = add nsw i64 %row0, %gx
  %arrayidx11 = getelementptr inbounds float, float* %I, i64 %i01
  %2 = load float, float* %arrayidx11, align 4, !tbaa !5
  %arrayidx12 = getelementptr inbounds float, float* %F, i64 1
  %3 = load float, float* %arrayidx12, align 4, !tbaa !5
  %mul13 = fmul float %2, %3
  %add14 = fadd float %add10, %mul13
  %i02 = add nsw i64 %row0, %x2
  %arrayidx15 = getelementptr inbounds float, float* %I, i64 %i02
  %4 = load float, float* %arrayidx15, align 4, !tbaa !5
  %arrayidx16 = getelementptr inbounds float, float* %F, i64 2
  %5 = load float, float* %arrayidx16, align 4, !tbaa !5
  %mul17 = fmul float %4, %5
  %add18 = fadd float %add14, %mul17
  %i10 = add nsw i64 %row1, %x0
  %arrayidx19 = getelementptr inbounds float, float* %I, i64 %i10
  %6 = load float, float* %arrayidx19, align 4, !tbaa !5
  %arrayidx20 = getelementptr inbounds float, float* %F, i64 3
  %7 = load float, float* %arrayidx20, align 4, !tbaa !5
  %mul21 = fmul float %6, %7
  %add22 = fadd float %add18, %mul21
  %i11 = add nsw i64 %row1, %gx
  %arrayidx23 = getelementptr inbounds float, float* %I, i64 %i11
  %8 = load float, float* %arrayidx23, align 4, !tbaa !5
  %arrayidx24 = getelementptr inbounds float, float* %F, i64 4
  %9 = load float, float* %arrayidx24, align 4, !tbaa !5
  %mul25 = fmul float %8, %9
  %add26 = fadd float %add22, %mul25
  %i12 = add nsw i64 %row1, %x2
  %arrayidx27 = getelementptr inbounds float, float* %I, i64 %i12
  %10 = load float, float* %arrayidx27, align 4, !tbaa !5
  %arrayidx28 = getelementptr inbounds float, float* %F, i64 5
  %11 = load float, float* %arrayidx28, align 4, !tbaa !5
  %mul29 = fmul float %10, %11
  %add30 = fadd float %add26, %mul29
  %i20 = add nsw i64 %row2, %x0
  %arrayidx31 = getelementptr inbounds float, float* %I, i64 %i20
  %12 = load float, float* %arrayidx31, align 4, !tbaa !5
  %arrayidx32 = getelementptr inbounds float, float* %F, i64 6
  %13 = load float, float* %arrayidx32, align 4, !tbaa !5
  %mul33 = fmul float %12, %13
  %add34 = fadd float %add30, %mul33
  %i21 = add nsw i64 %row2, %gx
  %arrayidx35 = getelementptr inbounds float, float* %I, i64 %i21
  %14 = load float, float* %arrayidx35, align 4, !tbaa !5
  %arrayidx36 = getelementptr inbounds float, float* %F, i64 7
  %15 = load float, float* %arrayidx36, align 4, !tbaa !5
  %mul37 = fmul float %14, %15
  %add38 = fadd float %add34, %mul37
  %i22 = add nsw i64 %row2, %x2
  %arrayidx39 = getelementptr inbounds float, float* %I, i64 %i22
  %16 = load float, float* %arrayidx39, align 4, !tbaa !5
  %arrayidx40 = getelementptr inbounds float, float* %F, i64 8
  %17 = load float, float* %arrayidx40, align 4, !tbaa !5
  %mul41 = fmul float %16, %17
  %add42 = fadd float %add38, %mul41
  %arrayidx43 = getelementptr inbounds float, float* %B, i64 %i11
  store float %add42, float* %arrayidx43, align 4, !tbaa !5
  br label %if.end

if.end:                                           ; preds = %if.then, %entry
  %returnStruct = insertvalue %struct.out.blur undef, i64 %bytes_B, 0
  ret %struct.out.blur %returnStruct
}

; Function Attrs: nounwind readnone
declare i8* @llvm.hpvm.getNode() #5

; Function Attrs: nounwind readnone
declare i8* @llvm.hpvm.getParentNode(i8*) #5

; Function Attrs: nounwind readnone
declare i64 @llvm.hpvm.getNodeInstanceID.x(i8*) #5

; Function Attrs: nounwind readnone
declare i64 @llvm.hpvm.getNodeInstanceID.y(i8*) #5

; Function Attrs: nounwind readnone
declare i64 @llvm.hpvm.getNumNodeInstances.x(i8*) #5

; Function Attrs: nounwind readnone
declare i64 @llvm.hpvm.getNumNodeInstances.y(i8*) #5

; Function Attrs: nounwind uwtable
define dso_local %struct.out.BlurBlock @BlurBlock_cloned(float* in %I, i64 %bytes_I, float* in %F, i64 %bytes_F, float* out %B, i64 %bytes_B, i64 %w, i64 %h) #0 {
entry:
  %blur_cloned.node = call i8* @llvm.hpvm.createNode2D(i8* bitcast (%struct.out.blur (float*, i64, float*, i64, float*, i64, i64, i64)* @blur_cloned to i8*), i64 8, i64 8)
  call void @llvm.hpvm.bind.input(i8* %blur_cloned.node, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(i8* %blur_cloned.node, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %blur_cloned.node, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %blur_cloned.node, i32 3, i32 3, i1 false)
  call void @llvm.hpvm.bind.input(i8* %blur_cloned.node, i32 4, i32 4, i1 false)
  call void @llvm.hpvm.bind.input(i8* %blur_cloned.node, i32 5, i32 5, i1 false)
  call void @llvm.hpvm.bind.input(i8* %blur_cloned.node, i32 6, i32 6, i1 false)
  call void @llvm.hpvm.bind.input(i8* %blur_cloned.node, i32 7, i32 7, i1 false)
  call void @llvm.hpvm.bind.output(i8* %blur_cloned.node, i32 0, i32 0, i1 false)
  ret %struct.out.BlurBlock undef
}

; Function Attrs: nounwind
declare i8* @llvm.hpvm.createNode2D(i8*, i64, i64) #4

; Function Attrs: nounwind
declare void @llvm.hpvm.bind.input(i8*, i32, i32, i1) #4

; Function Attrs: nounwind
declare void @llvm.hpvm.bind.output(i8*, i32, i32, i1) #4

; Function Attrs: nounwind uwtable
define dso_local %struct.out.mark @mark_cloned(float* in %B, i64 %bytes_B, float* in %I, i64 %bytes_I, i32* out %E, i64 %bytes_E, i32* in out %C, i64 %bytes_C, i64 %w, i64 %h, float %theta) #0 {
entry:
  %node = call i8* @llvm.hpvm.getNode()
  %parent = call i8* @llvm.hpvm.getParentNode(i8* %node)
  %lx = call i64 @llvm.hpvm.getNodeInstanceID.x(i8* %node)
  %ly = call i64 @llvm.hpvm.getNodeInstanceID.y(i8* %node)
  %dimx = call i64 @llvm.hpvm.getNumNodeInstances.x(i8* %node)
  %dimy = call i64 @llvm.hpvm.getNumNodeInstances.y(i8* %node)
  %bx = call i64 @llvm.hpvm.getNodeInstanceID.x(i8* %parent)
  %by = call i64 @llvm.hpvm.getNodeInstanceID.y(i8* %parent)
  %mul = mul nsw i64 %bx, %dimx
  %gx = add nsw i64 %mul, %lx
  %mul1 = mul nsw i64 %by, %dimy
  %gy = add nsw i64 %mul1, %ly
  %cmp = icmp slt i64 %gx, %w
  %cmp2 = icmp slt i64 %gy, %h
  %or.cond = and i1 %cmp, %cmp2
  br i1 %or.cond, label %if.then, label %if.end

if.then:                                          ; preds = %entry
  %mul3 = mul nsw i64 %gy, %w
  %add = add nsw i64 %mul3, %gx
  %sext = shl i64 %add, 32
  %idxprom = ashr exact i64 %sext, 32
  %arrayidx = getelementptr inbounds float, float* %B, i64 %idxprom
  %0 = load float, float* %arrayidx, align 4, !tbaa !5
  %arrayidx4 = getelementptr inbounds float, float* %I, i64 %idxprom
  %1 = load float, float* %arrayidx4, align 4, !tbaa !5
  %sub = fsub float %0, %1
  %2 = call float @llvm.fabs.f32(float %sub)
  %cmp5 = fcmp ogt float %2, %theta
  %conv = zext i1 %cmp5 to i32
  %arrayidx6 = getelementptr inbounds i32, i32* %E, i64 %idxprom
  store i32 %conv, i32* %arrayidx6, align 4, !tbaa !8
  %3 = bitcast i32* %C to i8*
  %call = call i32 @llvm.hpvm.atomic.add(i8* %3, i32 %conv)
  br label %if.end

if.end:                                           ; preds = %if.then, %entry
  %returnStruct = insertvalue %struct.out.mark undef, i64 %bytes_E, 0
  ret %struct.out.mark %returnStruct
}

; Function Attrs: nounwind readnone speculatable
declare float @llvm.fabs.f32(float) #6

; Function Attrs: nounwind
declare i32 @llvm.hpvm.atomic.add(i8*, i32) #4

; Function Attrs: nounwind uwtable
define dso_local %struct.out.MarkBlock @MarkBlock_cloned(float* in %B, i64 %bytes_B, float* in %I, i64 %bytes_I, i32* out %E, i64 %bytes_E, i32* in out %C, i64 %bytes_C, i64 %w, i64 %h, float %theta) #0 {
entry:
  %mark_cloned.node = call i8* @llvm.hpvm.createNode2D(i8* bitcast (%struct.out.mark (float*, i64, float*, i64, i32*, i64, i32*, i64, i64, i64, float)* @mark_cloned to i8*), i64 8, i64 8)
  call void @llvm.hpvm.bind.input(i8* %mark_cloned.node, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(i8* %mark_cloned.node, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %mark_cloned.node, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %mark_cloned.node, i32 3, i32 3, i1 false)
  call void @llvm.hpvm.bind.input(i8* %mark_cloned.node, i32 4, i32 4, i1 false)
  call void @llvm.hpvm.bind.input(i8* %mark_cloned.node, i32 5, i32 5, i1 false)
  call void @llvm.hpvm.bind.input(i8* %mark_cloned.node, i32 6, i32 6, i1 false)
  call void @llvm.hpvm.bind.input(i8* %mark_cloned.node, i32 7, i32 7, i1 false)
  call void @llvm.hpvm.bind.input(i8* %mark_cloned.node, i32 8, i32 8, i1 false)
  call void @llvm.hpvm.bind.input(i8* %mark_cloned.node, i32 9, i32 9, i1 false)
  call void @llvm.hpvm.bind.input(i8* %mark_cloned.node, i32 10, i32 10, i1 false)
  call void @llvm.hpvm.bind.output(i8* %mark_cloned.node, i32 0, i32 0, i1 false)
  ret %struct.out.MarkBlock undef
}

; Function Attrs: nounwind uwtable
define dso_local %struct.out.count @count_cloned(i32* in %C, i64 %bytes_C, i64 %bytes_E) #0 {
entry:
  %0 = load i32, i32* %C, align 4, !tbaa !8
  %div = lshr i64 %bytes_E, 2
  %conv = sitofp i32 %0 to float
  %conv1 = uitofp i64 %div to float
  %div2 = fdiv float %conv, %conv1
  %returnStruct = insertvalue %struct.out.count undef, i32 %0, 0
  %returnStruct3 = insertvalue %struct.out.count %returnStruct, float %div2, 1
  ret %struct.out.count %returnStruct3
}

; Function Attrs: nounwind uwtable
define dso_local %struct.out.EdgeRoot @EdgeRoot_cloned(float* in %I, i64 %bytes_I, float* in %F, i64 %bytes_F, float* out %B, i64 %bytes_B, i32* out %E, i64 %bytes_E, i32* in out %C, i64 %bytes_C, i64 %w, i64 %h, float %theta) #0 {
entry:
  %add = add nsw i64 %w, 7
  %div = sdiv i64 %add, 8
  %add1 = add nsw i64 %h, 7
  %div2 = sdiv i64 %add1, 8
  %BlurBlock_cloned.node = call i8* @llvm.hpvm.createNode2D(i8* bitcast (%struct.out.BlurBlock (float*, i64, float*, i64, float*, i64, i64, i64)* @BlurBlock_cloned to i8*), i64 %div, i64 %div2)
  %MarkBlock_cloned.node = call i8* @llvm.hpvm.createNode2D(i8* bitcast (%struct.out.MarkBlock (float*, i64, float*, i64, i32*, i64, i32*, i64, i64, i64, float)* @MarkBlock_cloned to i8*), i64 %div, i64 %div2)
  %count_cloned.node = call i8* @llvm.hpvm.createNode(i8* bitcast (%struct.out.count (i32*, i64, i64)* @count_cloned to i8*))
  call void @llvm.hpvm.bind.input(i8* %BlurBlock_cloned.node, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(i8* %BlurBlock_cloned.node, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %BlurBlock_cloned.node, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %BlurBlock_cloned.node, i32 3, i32 3, i1 false)
  call void @llvm.hpvm.bind.input(i8* %BlurBlock_cloned.node, i32 4, i32 4, i1 false)
  call void @llvm.hpvm.bind.input(i8* %BlurBlock_cloned.node, i32 5, i32 5, i1 false)
  call void @llvm.hpvm.bind.input(i8* %BlurBlock_cloned.node, i32 10, i32 6, i1 false)
  call void @llvm.hpvm.bind.input(i8* %BlurBlock_cloned.node, i32 11, i32 7, i1 false)
  call void @llvm.hpvm.bind.input(i8* %MarkBlock_cloned.node, i32 4, i32 0, i1 false)
  %output = call i8* @llvm.hpvm.createEdge(i8* %BlurBlock_cloned.node, i8* %MarkBlock_cloned.node, i1 false, i32 0, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %MarkBlock_cloned.node, i32 0, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %MarkBlock_cloned.node, i32 1, i32 3, i1 false)
  call void @llvm.hpvm.bind.input(i8* %MarkBlock_cloned.node, i32 6, i32 4, i1 false)
  call void @llvm.hpvm.bind.input(i8* %MarkBlock_cloned.node, i32 7, i32 5, i1 false)
  call void @llvm.hpvm.bind.input(i8* %MarkBlock_cloned.node, i32 8, i32 6, i1 false)
  call void @llvm.hpvm.bind.input(i8* %MarkBlock_cloned.node, i32 9, i32 7, i1 false)
  call void @llvm.hpvm.bind.input(i8* %MarkBlock_cloned.node, i32 10, i32 8, i1 false)
  call void @llvm.hpvm.bind.input(i8* %MarkBlock_cloned.node, i32 11, i32 9, i1 false)
  call void @llvm.hpvm.bind.input(i8* %MarkBlock_cloned.node, i32 12, i32 10, i1 false)
  call void @llvm.hpvm.bind.input(i8* %count_cloned.node, i32 8, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(i8* %count_cloned.node, i32 9, i32 1, i1 false)
  %output3 = call i8* @llvm.hpvm.createEdge(i8* %MarkBlock_cloned.node, i8* %count_cloned.node, i1 true, i32 0, i32 2, i1 false)
  call void @llvm.hpvm.bind.output(i8* %count_cloned.node, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.output(i8* %count_cloned.node, i32 1, i32 1, i1 false)
  ret %struct.out.EdgeRoot undef
}

; Function Attrs: nounwind
declare i8* @llvm.hpvm.createNode(i8*) #4

; Function Attrs: nounwind
declare i8* @llvm.hpvm.createEdge(i8*, i8*, i1, i32, i32, i1) #4

; Function Attrs: nounwind
declare void @llvm.hpvm.init() #4

; Function Attrs: nounwind
declare i8* @llvm.hpvm.launch(i8*, i8*, i1) #4

; Function Attrs: nounwind
declare void @llvm.hpvm.wait(i8*) #4

; Function Attrs: nounwind
declare void @llvm.hpvm.cleanup() #4

attributes #0 = { nounwind uwtable "correctly-rounded-divide-sqrt-fp-math"="false" "disable-tail-calls"="false" "less-precise-fpmad"="false" "min-legal-vector-width"="0" "no-frame-pointer-elim"="false" "no-infs-fp-math"="false" "no-jump-tables"="false" "no-nans-fp-math"="false" "no-signed-zeros-fp-math"="false" "no-trapping-math"="false" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "unsafe-fp-math"="false" "use-soft-float"="false" }
attributes #1 = { argmemonly nounwind }
attributes #2 = { nofree nounwind "correctly-rounded-divide-sqrt-fp-math"="false" "disable-tail-calls"="false" "less-precise-fpmad"="false" "no-frame-pointer-elim"="false" "no-infs-fp-math"="false" "no-nans-fp-math"="false" "no-signed-zeros-fp-math"="false" "no-trapping-math"="false" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "unsafe-fp-math"="false" "use-soft-float"="false" }
attributes #3 = { "correctly-rounded-divide-sqrt-fp-math"="false" "disable-tail-calls"="false" "less-precise-fpmad"="false" "no-frame-pointer-elim"="false" "no-infs-fp-math"="false" "no-nans-fp-math"="false" "no-signed-zeros-fp-math"="false" "no-trapping-math"="false" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "unsafe-fp-math"="false" "use-soft-float"="false" }
attributes #4 = { nounwind }
attributes #5 = { nounwind readnone }
attributes #6 = { nounwind readnone speculatable }

!llvm.module.flags = !{!0}
!llvm.ident = !{!1}
!hpvm_hint_gpu = !{!28, !29}
!hpvm_hint_cpu = !{!2, !3, !10, !11}
!hpvm_hint_spir = !{}
!hpvm_hint_cudnn = !{}
!hpvm_hint_promise = !{}
!hpvm_hint_cpu_gpu = !{}
!hpvm_hint_cpu_spir = !{}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{!"clang version 9.0.0"}
!2 = !{%struct.out.BlurBlock (float*, i64, float*, i64, float*, i64, i64, i64)* @BlurBlock_cloned}
!3 = !{%struct.out.MarkBlock (float*, i64, float*, i64, i32*, i64, i32*, i64, i64, i64, float)* @MarkBlock_cloned}
!4 = !{!"Simple C/C++ TBAA"}
!5 = !{!6, !6, i64 0}
!6 = !{!"float", !7, i64 0}
!7 = !{!"omnipotent char", !4, i64 0}
!8 = !{!9, !9, i64 0}
!9 = !{!"int", !7, i64 0}
!10 = !{%struct.out.count (i32*, i64, i64)* @count_cloned}
!11 = !{%struct.out.EdgeRoot (float*, i64, float*, i64, float*, i64, i32*, i64, i32*, i64, i64, i64, float)* @EdgeRoot_cloned}
!12 = !{!13, !14, i64 0}
!13 = !{!"Root", !14, i64 0, !15, i64 8, !14, i64 16, !15, i64 24, !14, i64 32, !15, i64 40, !14, i64 48, !15, i64 56, !14, i64 64, !15, i64 72, !15, i64 80, !15, i64 88, !6, i64 96}
!14 = !{!"any pointer", !7, i64 0}
!15 = !{!"long", !7, i64 0}
!16 = !{!13, !15, i64 8}
!17 = !{!13, !14, i64 16}
!18 = !{!13, !15, i64 24}
!19 = !{!13, !14, i64 32}
!20 = !{!13, !15, i64 40}
!21 = !{!13, !14, i64 48}
!22 = !{!13, !15, i64 56}
!23 = !{!13, !14, i64 64}
!24 = !{!13, !15, i64 72}
!25 = !{!13, !15, i64 80}
!26 = !{!13, !15, i64 88}
!27 = !{!13, !6, i64 96}
!28 = !{%struct.out.blur (float*, i64, float*, i64, float*, i64, i64, i64)* @blur_cloned}
!29 = !{%struct.out.mark (float*, i64, float*, i64, i32*, i64, i32*, i64, i64, i64, float)* @mark_cloned}
